// strata::device_pool on a Vulkan device: VkBuffers and VkImages (optimal and linear tiling) bound
// at pool offsets inside VkDeviceMemory blocks, filled on the device, half of them freed, then
// defragmented pass by pass with copies recorded on the device, and every byte of every survivor
// read back through a host-visible staging buffer.
//
// Runs on Mesa's lavapipe (a CPU driver) in CI and on a real GPU where there is one, under the
// Khronos validation layer (with its synchronization checks where the layer offers them): every
// message of severity warning or error fails the test.
//
// Environment:
// - STRATA_REQUIRE_VULKAN=1: fail, rather than skip, when no Vulkan device can be created
//   (family.cmake sets it where lavapipe is installed, so that CI notices a test that stopped
//   running).
// - STRATA_VULKAN_DEVICE=<text>: use the first physical device whose name contains <text>.
#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#if STRATA_HAVE_VULKAN
#include <vulkan/vulkan.h>
#endif

#if defined(__SANITIZE_ADDRESS__)
#define STRATA_VULKAN_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define STRATA_VULKAN_TEST_ASAN 1
#endif
#endif
#if STRATA_HAVE_VULKAN && STRATA_VULKAN_TEST_ASAN
#include <dlfcn.h>
#include <link.h>
#endif

#include "strata/device/device_pool.hpp"

namespace {

bool vulkan_required() {
    const char* v = std::getenv("STRATA_REQUIRE_VULKAN");
    return v != nullptr && std::string_view(v) == "1";
}

#if !STRATA_HAVE_VULKAN

TEST(DeviceVulkan, NeedsVulkan) {
    if (vulkan_required())
        FAIL() << "STRATA_REQUIRE_VULKAN=1, but this build has no Vulkan: find_package(Vulkan) found no "
                  "headers or loader (install libvulkan-dev and reconfigure)";
    GTEST_SKIP() << "built without Vulkan (find_package(Vulkan) found no headers or loader)";
}

#else

using strata::defrag_move;
using strata::defrag_op;
using strata::device_allocation;
using strata::device_pool;
using strata::resource_kind;

// Throws std::runtime_error naming `call` when `r` is not VK_SUCCESS: gtest reports it as the test's
// failure, and the RAII owners below still tear the device down.
void vk_check(VkResult r, const char* call) {
    if (r != VK_SUCCESS)
        throw std::runtime_error(std::string(call) + " failed: VkResult " +
                                 std::to_string(static_cast<int>(r)));
}

// Returns: a Vulkan structure of type T, zeroed, with its sType set.
template <class T>
T vk_struct(VkStructureType type) noexcept {
    T t{};
    t.sType = type;
    return t;
}

// The pool stores the application's memory handles as 64-bit integers. VkDeviceMemory is a
// pointer on 64-bit platforms and a uint64_t elsewhere: 8 bytes either way.
std::uint64_t to_handle(VkDeviceMemory memory) noexcept { return std::bit_cast<std::uint64_t>(memory); }
VkDeviceMemory to_memory(std::uint64_t handle) noexcept { return std::bit_cast<VkDeviceMemory>(handle); }

#if STRATA_VULKAN_TEST_ASAN
// LeakSanitizer and the Vulkan libraries. vkDestroyInstance unloads the drivers and layers: the
// memory their globals still point to then looks leaked, and LeakSanitizer can no longer name the
// module of an allocation's stack. So the libraries loaded once a device exists stay loaded for
// the rest of the process, and the one library that leaks is named in __lsan_default_suppressions
// below: the validation layer, whose synchronization validation never frees some of the state it
// keeps for command buffers and submissions (memory only it can reach, so no direct leak).
void pin_loaded_libraries() {
    std::vector<std::string> names;
    dl_iterate_phdr(
        [](dl_phdr_info* info, std::size_t, void* out) {
            if (info->dlpi_name != nullptr && info->dlpi_name[0] != '\0')
                static_cast<std::vector<std::string>*>(out)->emplace_back(info->dlpi_name);
            return 0;
        },
        &names);
    // dlopen after the walk: dl_iterate_phdr holds the loader's lock. The handles are never closed.
    for (const std::string& name : names)
        (void)dlopen(name.c_str(), RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
}
#endif

// Every message of severity warning or error that the layers and the loader report.
struct vk_messages {
    std::mutex mutex;
    std::vector<std::string> text;
};

VKAPI_ATTR VkBool32 VKAPI_CALL record_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                              VkDebugUtilsMessageTypeFlagsEXT,
                                              const VkDebugUtilsMessengerCallbackDataEXT* data, void* user) {
    constexpr auto counted =
        VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
    if ((severity & counted) == 0) return VK_FALSE;
    std::string line = (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) != 0 ? "error" : "warning";
    if (data->pMessageIdName != nullptr) line.append(" [").append(data->pMessageIdName).append("]");
    line.append(": ").append(data->pMessage != nullptr ? data->pMessage : "(no text)");
    auto& log = *static_cast<vk_messages*>(user);
    const std::lock_guard lock(log.mutex);
    log.text.push_back(std::move(line));
    return VK_FALSE; // never abort the call: the test counts and reports instead
}

bool has_layer(const std::vector<VkLayerProperties>& layers, std::string_view name) {
    return std::any_of(layers.begin(), layers.end(),
                       [&](const VkLayerProperties& l) { return name == l.layerName; });
}

std::vector<VkExtensionProperties> instance_extensions(const char* layer) {
    std::uint32_t n = 0;
    if (vkEnumerateInstanceExtensionProperties(layer, &n, nullptr) != VK_SUCCESS) return {};
    std::vector<VkExtensionProperties> out(n);
    if (vkEnumerateInstanceExtensionProperties(layer, &n, out.data()) != VK_SUCCESS) return {};
    out.resize(n);
    return out;
}

bool has_extension(const std::vector<VkExtensionProperties>& extensions, std::string_view name) {
    return std::any_of(extensions.begin(), extensions.end(),
                       [&](const VkExtensionProperties& e) { return name == e.extensionName; });
}

const char* device_type_name(VkPhysicalDeviceType type) {
    switch (type) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete GPU";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated GPU";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual GPU";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "CPU";
    default: return "other";
    }
}

// Real GPUs first, then virtual ones, then CPU drivers such as lavapipe.
int device_rank(VkPhysicalDeviceType type) {
    switch (type) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return 0;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return 1;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return 3;
    default: return 4;
    }
}

// An instance (with the validation layer and a messenger when available), one physical device, a
// logical device with one queue that takes transfer and clear commands, and a way to run commands.
class vk_context {
public:
    // Returns: a context, or nullptr with the reason in `why`. Messages go to `log`, which must
    // outlive the context (the instance reports until it is destroyed).
    static std::unique_ptr<vk_context> create(vk_messages& log, std::string& why) {
        std::unique_ptr<vk_context> c(new vk_context);
        if (!c->init(log, why)) return nullptr; // the destructor undoes what init did
        return c;
    }

    vk_context(const vk_context&) = delete;
    vk_context& operator=(const vk_context&) = delete;

    ~vk_context() {
        if (device_ != VK_NULL_HANDLE) {
            (void)vkDeviceWaitIdle(device_);
            if (fence_ != VK_NULL_HANDLE) vkDestroyFence(device_, fence_, nullptr);
            if (command_pool_ != VK_NULL_HANDLE) vkDestroyCommandPool(device_, command_pool_, nullptr);
            vkDestroyDevice(device_, nullptr);
        }
        if (messenger_ != VK_NULL_HANDLE) {
            const auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
                vkGetInstanceProcAddr(instance_, "vkDestroyDebugUtilsMessengerEXT"));
            if (destroy != nullptr) destroy(instance_, messenger_, nullptr);
        }
        if (instance_ != VK_NULL_HANDLE) vkDestroyInstance(instance_, nullptr);
    }

    [[nodiscard]] VkDevice device() const noexcept { return device_; }
    [[nodiscard]] VkPhysicalDevice physical() const noexcept { return physical_; }
    [[nodiscard]] const VkPhysicalDeviceProperties& properties() const noexcept { return properties_; }
    [[nodiscard]] const VkPhysicalDeviceMemoryProperties& memory() const noexcept { return memory_; }
    [[nodiscard]] bool validation() const noexcept { return validation_; }
    [[nodiscard]] bool sync_validation() const noexcept { return sync_validation_; }

    // Effects: records commands with record(VkCommandBuffer), submits them and waits until the
    // device has executed them.
    template <class Record>
    void run(Record&& record) {
        auto ai = vk_struct<VkCommandBufferAllocateInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO);
        ai.commandPool = command_pool_;
        ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
        ai.commandBufferCount = 1;
        VkCommandBuffer cb = VK_NULL_HANDLE;
        vk_check(vkAllocateCommandBuffers(device_, &ai, &cb), "vkAllocateCommandBuffers");
        auto bi = vk_struct<VkCommandBufferBeginInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
        bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
        vk_check(vkBeginCommandBuffer(cb, &bi), "vkBeginCommandBuffer");
        record(cb);
        vk_check(vkEndCommandBuffer(cb), "vkEndCommandBuffer");
        auto si = vk_struct<VkSubmitInfo>(VK_STRUCTURE_TYPE_SUBMIT_INFO);
        si.commandBufferCount = 1;
        si.pCommandBuffers = &cb;
        vk_check(vkQueueSubmit(queue_, 1, &si, fence_), "vkQueueSubmit");
        constexpr std::uint64_t timeout_ns = std::uint64_t{60} * 1000 * 1000 * 1000; // a hung device fails
        vk_check(vkWaitForFences(device_, 1, &fence_, VK_TRUE, timeout_ns), "vkWaitForFences");
        vk_check(vkResetFences(device_, 1, &fence_), "vkResetFences");
        vkFreeCommandBuffers(device_, command_pool_, 1, &cb);
    }

    // Returns: "<name> (<type>, Vulkan x.y.z)".
    [[nodiscard]] std::string description() const {
        const std::uint32_t v = properties_.apiVersion;
        return std::string(properties_.deviceName) + " (" + device_type_name(properties_.deviceType) +
               ", Vulkan " + std::to_string(VK_API_VERSION_MAJOR(v)) + "." +
               std::to_string(VK_API_VERSION_MINOR(v)) + "." + std::to_string(VK_API_VERSION_PATCH(v)) + ")";
    }

private:
    vk_context() = default;

    bool init(vk_messages& log, std::string& why) {
        std::uint32_t loader_version = VK_API_VERSION_1_0;
        if (vkEnumerateInstanceVersion(&loader_version) != VK_SUCCESS ||
            loader_version < VK_API_VERSION_1_1) {
            why = "the Vulkan loader does not support Vulkan 1.1";
            return false;
        }

        std::uint32_t n = 0;
        std::vector<VkLayerProperties> layers;
        if (vkEnumerateInstanceLayerProperties(&n, nullptr) == VK_SUCCESS) {
            layers.resize(n);
            if (vkEnumerateInstanceLayerProperties(&n, layers.data()) != VK_SUCCESS) n = 0;
            layers.resize(n);
        }
        constexpr const char* validation_layer = "VK_LAYER_KHRONOS_validation";
        validation_ = has_layer(layers, validation_layer);
        const std::vector<VkExtensionProperties> global = instance_extensions(nullptr);
        const std::vector<VkExtensionProperties> layer =
            validation_ ? instance_extensions(validation_layer) : std::vector<VkExtensionProperties>{};
        const bool debug_utils = has_extension(global, VK_EXT_DEBUG_UTILS_EXTENSION_NAME) ||
                                 has_extension(layer, VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
        // Synchronization validation is asked for through VK_EXT_layer_settings where the layer
        // offers it (newer layers warn about the deprecated VK_EXT_validation_features), else
        // through VK_EXT_validation_features.
        bool layer_settings = false;
#if defined(VK_EXT_layer_settings)
        layer_settings = has_extension(layer, VK_EXT_LAYER_SETTINGS_EXTENSION_NAME);
#endif
        const bool validation_features =
            !layer_settings && has_extension(layer, VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME);
        sync_validation_ = layer_settings || validation_features;

        std::vector<const char*> enabled_layers;
        std::vector<const char*> extensions;
        if (validation_) enabled_layers.push_back(validation_layer);
        if (debug_utils) extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
        if (validation_features) extensions.push_back(VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME);

        // The messenger is chained into VkInstanceCreateInfo as well, so that what instance
        // creation and destruction report is counted too.
        auto messenger_info = vk_struct<VkDebugUtilsMessengerCreateInfoEXT>(
            VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT);
        messenger_info.messageSeverity =
            VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
        messenger_info.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                                     VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                                     VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
        messenger_info.pfnUserCallback = record_message;
        messenger_info.pUserData = &log;
        const VkValidationFeatureEnableEXT enables[] = {
            VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
        auto features = vk_struct<VkValidationFeaturesEXT>(VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT);
        features.enabledValidationFeatureCount = 1;
        features.pEnabledValidationFeatures = enables;
        if (validation_features) messenger_info.pNext = &features;
#if defined(VK_EXT_layer_settings)
        const VkBool32 on = VK_TRUE;
        const VkLayerSettingEXT validate_sync{validation_layer, "validate_sync",
                                              VK_LAYER_SETTING_TYPE_BOOL32_EXT, 1, &on};
        auto settings =
            vk_struct<VkLayerSettingsCreateInfoEXT>(VK_STRUCTURE_TYPE_LAYER_SETTINGS_CREATE_INFO_EXT);
        settings.settingCount = 1;
        settings.pSettings = &validate_sync;
        if (layer_settings) {
            extensions.push_back(VK_EXT_LAYER_SETTINGS_EXTENSION_NAME);
            messenger_info.pNext = &settings;
        }
#endif

        auto app = vk_struct<VkApplicationInfo>(VK_STRUCTURE_TYPE_APPLICATION_INFO);
        app.pApplicationName = "strata_device_tests";
        app.pEngineName = "strata";
        app.apiVersion = VK_API_VERSION_1_1;
        auto ci = vk_struct<VkInstanceCreateInfo>(VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO);
        ci.pNext = debug_utils ? &messenger_info : nullptr;
        ci.pApplicationInfo = &app;
        ci.enabledLayerCount = static_cast<std::uint32_t>(enabled_layers.size());
        ci.ppEnabledLayerNames = enabled_layers.data();
        ci.enabledExtensionCount = static_cast<std::uint32_t>(extensions.size());
        ci.ppEnabledExtensionNames = extensions.data();
        if (const VkResult r = vkCreateInstance(&ci, nullptr, &instance_); r != VK_SUCCESS) {
            instance_ = VK_NULL_HANDLE;
            why = "vkCreateInstance failed (VkResult " + std::to_string(static_cast<int>(r)) +
                  "): no usable Vulkan driver";
            return false;
        }
        if (debug_utils) {
            const auto create_messenger = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
                vkGetInstanceProcAddr(instance_, "vkCreateDebugUtilsMessengerEXT"));
            messenger_info.pNext = nullptr;
            if (create_messenger == nullptr ||
                create_messenger(instance_, &messenger_info, nullptr, &messenger_) != VK_SUCCESS) {
                messenger_ = VK_NULL_HANDLE;
                why = "vkCreateDebugUtilsMessengerEXT failed";
                return false;
            }
        }

        if (!pick_device(why)) return false;

        const float priority = 1.0f;
        auto qi = vk_struct<VkDeviceQueueCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO);
        qi.queueFamilyIndex = queue_family_;
        qi.queueCount = 1;
        qi.pQueuePriorities = &priority;
        auto di = vk_struct<VkDeviceCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO);
        di.queueCreateInfoCount = 1;
        di.pQueueCreateInfos = &qi;
        if (const VkResult r = vkCreateDevice(physical_, &di, nullptr, &device_); r != VK_SUCCESS) {
            device_ = VK_NULL_HANDLE;
            why = "vkCreateDevice failed on " + description() + " (VkResult " +
                  std::to_string(static_cast<int>(r)) + ")";
            return false;
        }
#if STRATA_VULKAN_TEST_ASAN
        pin_loaded_libraries();
#endif
        vkGetDeviceQueue(device_, queue_family_, 0, &queue_);
        auto pi = vk_struct<VkCommandPoolCreateInfo>(VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO);
        pi.flags = VK_COMMAND_POOL_CREATE_TRANSIENT_BIT;
        pi.queueFamilyIndex = queue_family_;
        auto fi = vk_struct<VkFenceCreateInfo>(VK_STRUCTURE_TYPE_FENCE_CREATE_INFO);
        if (vkCreateCommandPool(device_, &pi, nullptr, &command_pool_) != VK_SUCCESS ||
            vkCreateFence(device_, &fi, nullptr, &fence_) != VK_SUCCESS) {
            why = "vkCreateCommandPool or vkCreateFence failed";
            return false;
        }
        return true;
    }

    // Picks the best-ranked device of Vulkan 1.1 or later with a queue family that takes clear and
    // transfer commands (graphics or compute); with STRATA_VULKAN_DEVICE set, only among the devices
    // whose name contains it.
    bool pick_device(std::string& why) {
        std::uint32_t n = 0;
        if (vkEnumeratePhysicalDevices(instance_, &n, nullptr) != VK_SUCCESS || n == 0) {
            why = "no Vulkan physical device (no driver reports one)";
            return false;
        }
        std::vector<VkPhysicalDevice> devices(n);
        if (vkEnumeratePhysicalDevices(instance_, &n, devices.data()) < VK_SUCCESS) {
            why = "vkEnumeratePhysicalDevices failed";
            return false;
        }
        devices.resize(n);
        const char* wanted = std::getenv("STRATA_VULKAN_DEVICE");
        int best_rank = 1 << 30;
        std::string seen;
        for (VkPhysicalDevice d : devices) {
            VkPhysicalDeviceProperties p;
            vkGetPhysicalDeviceProperties(d, &p);
            seen += seen.empty() ? "" : ", ";
            seen += p.deviceName;
            if (p.apiVersion < VK_API_VERSION_1_1) continue;
            if (wanted != nullptr && *wanted != '\0' && std::strstr(p.deviceName, wanted) == nullptr)
                continue;
            std::uint32_t families = 0;
            vkGetPhysicalDeviceQueueFamilyProperties(d, &families, nullptr);
            std::vector<VkQueueFamilyProperties> q(families);
            vkGetPhysicalDeviceQueueFamilyProperties(d, &families, q.data());
            std::uint32_t family = ~std::uint32_t{0};
            for (std::uint32_t i = 0; i < families && family == ~std::uint32_t{0}; ++i)
                if (q[i].queueCount > 0 &&
                    (q[i].queueFlags & (VK_QUEUE_GRAPHICS_BIT | VK_QUEUE_COMPUTE_BIT)) != 0)
                    family = i;
            if (family == ~std::uint32_t{0}) continue;
            const int rank = device_rank(p.deviceType);
            if (rank >= best_rank) continue;
            best_rank = rank;
            physical_ = d;
            queue_family_ = family;
            properties_ = p;
        }
        if (physical_ == VK_NULL_HANDLE) {
            why = "no Vulkan 1.1 device with a graphics or compute queue";
            if (wanted != nullptr && *wanted != '\0')
                why += std::string(" whose name contains '") + wanted + "'";
            why += " (devices: " + seen + ")";
            return false;
        }
        vkGetPhysicalDeviceMemoryProperties(physical_, &memory_);
        return true;
    }

    VkInstance instance_ = VK_NULL_HANDLE;
    VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
    VkPhysicalDevice physical_ = VK_NULL_HANDLE;
    VkPhysicalDeviceProperties properties_{};
    VkPhysicalDeviceMemoryProperties memory_{};
    std::uint32_t queue_family_ = 0;
    VkDevice device_ = VK_NULL_HANDLE;
    VkQueue queue_ = VK_NULL_HANDLE;
    VkCommandPool command_pool_ = VK_NULL_HANDLE;
    VkFence fence_ = VK_NULL_HANDLE;
    bool validation_ = false;
    bool sync_validation_ = false;
};

// -- resources ------------------------------------------------------------------------------------

constexpr VkFormat image_format = VK_FORMAT_R8G8B8A8_UINT;
constexpr VkDeviceSize texel_bytes = 4;
constexpr VkImageUsageFlags image_usage = VK_IMAGE_USAGE_TRANSFER_SRC_BIT | VK_IMAGE_USAGE_TRANSFER_DST_BIT;

enum class resource_type : std::uint8_t { buffer, optimal_image, linear_image };

// One VkBuffer or VkImage of the test, bound at a pool allocation, and what it should hold.
struct resource {
    resource_type type = resource_type::buffer;
    VkBuffer buffer = VK_NULL_HANDLE;
    VkImage image = VK_NULL_HANDLE;
    VkImageLayout layout = VK_IMAGE_LAYOUT_UNDEFINED; // of every mip level, as the device has it
    VkDeviceSize size = 0;                            // buffer bytes (a multiple of 4, at least 8)
    VkExtent2D extent{};                              // image texels at mip level 0
    std::uint32_t mips = 1;
    std::uint32_t seed = 0; // names the contents
    VkMemoryRequirements requirements{};
    device_allocation allocation;
    std::uint64_t memory = 0; // where it is bound
    VkDeviceSize offset = 0;
    bool dedicated = false;

    [[nodiscard]] bool is_image() const noexcept { return type != resource_type::buffer; }
    [[nodiscard]] resource_kind kind() const noexcept {
        return type == resource_type::optimal_image ? resource_kind::optimal : resource_kind::linear;
    }
    [[nodiscard]] VkExtent2D mip_extent(std::uint32_t mip) const noexcept {
        return {std::max(extent.width >> mip, 1u), std::max(extent.height >> mip, 1u)};
    }
    // Returns: the bytes a readback of this resource takes (images: every mip level, tightly packed).
    [[nodiscard]] VkDeviceSize readback_bytes() const noexcept {
        if (!is_image()) return size;
        VkDeviceSize bytes = 0;
        for (std::uint32_t m = 0; m < mips; ++m)
            bytes += VkDeviceSize{mip_extent(m).width} * mip_extent(m).height * texel_bytes;
        return bytes;
    }
};

// What a buffer holds: the fill word of its seed everywhere, but a head word and a tail word of
// their own, so that a copy that is shifted or short shows.
std::uint32_t fill_word(std::uint32_t seed) noexcept { return seed * 0x9E3779B1u ^ 0x5BD1E995u; }
std::uint32_t head_word(std::uint32_t seed) noexcept { return fill_word(seed) ^ 0xA5A5A5A5u; }
std::uint32_t tail_word(std::uint32_t seed) noexcept { return ~fill_word(seed); }
std::uint32_t expected_word(const resource& r, VkDeviceSize word) noexcept {
    if (word == 0) return head_word(r.seed);
    if (word == r.size / 4 - 1) return tail_word(r.seed);
    return fill_word(r.seed);
}
// What mip level `mip` of an image holds: one texel of its seed and level everywhere.
std::array<std::uint8_t, 4> texel(std::uint32_t seed, std::uint32_t mip) noexcept {
    const std::uint32_t v = (seed + 1) * 0x2545F491u + mip * 0x61C88647u;
    return {static_cast<std::uint8_t>(v), static_cast<std::uint8_t>(v >> 8),
            static_cast<std::uint8_t>(v >> 16), static_cast<std::uint8_t>(v >> 24)};
}

const char* type_name(resource_type t) {
    switch (t) {
    case resource_type::buffer: return "buffer";
    case resource_type::optimal_image: return "optimal image";
    case resource_type::linear_image: return "linear image";
    }
    return "?";
}

// Effects: creates r's VkBuffer or VkImage (unbound) and reads its memory requirements.
void create_resource(VkDevice device, resource& r) {
    if (!r.is_image()) {
        auto bi = vk_struct<VkBufferCreateInfo>(VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO);
        bi.size = r.size;
        bi.usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
        bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
        vk_check(vkCreateBuffer(device, &bi, nullptr, &r.buffer), "vkCreateBuffer");
        vkGetBufferMemoryRequirements(device, r.buffer, &r.requirements);
    } else {
        auto ii = vk_struct<VkImageCreateInfo>(VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO);
        ii.imageType = VK_IMAGE_TYPE_2D;
        ii.format = image_format;
        ii.extent = {r.extent.width, r.extent.height, 1};
        ii.mipLevels = r.mips;
        ii.arrayLayers = 1;
        ii.samples = VK_SAMPLE_COUNT_1_BIT;
        ii.tiling = r.type == resource_type::optimal_image ? VK_IMAGE_TILING_OPTIMAL : VK_IMAGE_TILING_LINEAR;
        ii.usage = image_usage;
        ii.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
        ii.initialLayout = VK_IMAGE_LAYOUT_UNDEFINED;
        vk_check(vkCreateImage(device, &ii, nullptr, &r.image), "vkCreateImage");
        vkGetImageMemoryRequirements(device, r.image, &r.requirements);
    }
    r.layout = VK_IMAGE_LAYOUT_UNDEFINED;
}

void bind_resource(VkDevice device, resource& r, std::uint64_t memory, VkDeviceSize offset) {
    if (r.is_image())
        vk_check(vkBindImageMemory(device, r.image, to_memory(memory), offset), "vkBindImageMemory");
    else
        vk_check(vkBindBufferMemory(device, r.buffer, to_memory(memory), offset), "vkBindBufferMemory");
    r.memory = memory;
    r.offset = offset;
}

void destroy_resource(VkDevice device, resource& r) {
    if (r.buffer != VK_NULL_HANDLE) vkDestroyBuffer(device, r.buffer, nullptr);
    if (r.image != VK_NULL_HANDLE) vkDestroyImage(device, r.image, nullptr);
    r.buffer = VK_NULL_HANDLE;
    r.image = VK_NULL_HANDLE;
}

VkImageMemoryBarrier layout_barrier(resource& r, VkImageLayout to) {
    auto b = vk_struct<VkImageMemoryBarrier>(VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER);
    // Transfer writes before this point are made available, also those of resources that were
    // bound to these bytes before: a layout transition writes the image's memory.
    b.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    b.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    b.oldLayout = r.layout;
    b.newLayout = to;
    b.srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
    b.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
    b.image = r.image;
    b.subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, r.mips, 0, 1};
    r.layout = to;
    return b;
}

// Records one barrier between transfer commands: every earlier transfer write is made available
// and visible to later transfer reads and writes (memory is reused by resources bound to bytes
// another one was written through), and `images` change layout.
void transfer_barrier(VkCommandBuffer cb, const std::vector<VkImageMemoryBarrier>& images) {
    auto global = vk_struct<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
    global.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    global.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &global, 0,
                         nullptr, static_cast<std::uint32_t>(images.size()), images.data());
}

// Returns: the index of a memory type in `bits` with all of `want` (and `prefer` too when one has
// it), or ~0u.
std::uint32_t find_memory_type(const VkPhysicalDeviceMemoryProperties& props, std::uint32_t bits,
                               VkMemoryPropertyFlags want, VkMemoryPropertyFlags prefer) {
    std::uint32_t found = ~0u;
    for (std::uint32_t i = 0; i < props.memoryTypeCount; ++i) {
        if (((bits >> i) & 1u) == 0) continue;
        const VkMemoryPropertyFlags f = props.memoryTypes[i].propertyFlags;
        if ((f & want) != want) continue;
        if ((f & prefer) == prefer) return i;
        if (found == ~0u) found = i;
    }
    return found;
}

// Returns: an empty string when no two live resources bound in one memory overlap and no linear and
// optimal resources share a page of `granularity` bytes (checked on the bound ranges, independently
// of the pool's own checker); otherwise the first violation.
std::string check_bindings(const std::vector<resource>& resources, const std::vector<bool>& live,
                           VkDeviceSize granularity) {
    std::vector<const resource*> bound;
    for (std::size_t i = 0; i < resources.size(); ++i)
        if (live[i]) bound.push_back(&resources[i]);
    std::sort(bound.begin(), bound.end(), [](const resource* a, const resource* b) {
        return a->memory != b->memory ? a->memory < b->memory : a->offset < b->offset;
    });
    for (std::size_t i = 1; i < bound.size(); ++i) {
        const resource& a = *bound[i - 1];
        const resource& b = *bound[i];
        if (a.memory != b.memory) continue;
        const VkDeviceSize a_end = a.offset + a.requirements.size;
        if (a_end > b.offset)
            return "resources overlap at offsets " + std::to_string(a.offset) + " and " +
                   std::to_string(b.offset);
        if (a.kind() != b.kind() && (a_end - 1) / granularity == b.offset / granularity)
            return std::string("a ") + type_name(a.type) + " ending at " + std::to_string(a_end) + " and a " +
                   type_name(b.type) + " at " + std::to_string(b.offset) + " share a " +
                   std::to_string(granularity) + "-byte page";
    }
    return {};
}

// -- the scenario ---------------------------------------------------------------------------------

struct scenario {
    std::uint32_t rounds = 1;      // each: create, fill, free half, defragment, read everything back
    std::uint32_t resources = 384; // created in each round
    unsigned image_percent = 30;   // share of images (half optimal, half linear) where supported
    std::uint32_t dedicated = 2;   // buffers above the pool's dedicated threshold, in the first round
    strata::allocation_strategy strategy = strata::allocation_strategy::min_time;
    std::uint32_t keep_empty_blocks = 1;
    strata::defrag_options defrag{};
    bool ignore_and_free_in_flight = false; // first pass: ignore some moves, free a moving allocation
    std::uint64_t block_size = std::uint64_t{4} << 20; // small: the resources spread over several blocks
    std::uint32_t seed = 1;
};

// Rounds of: create random resources and bind them at pool allocations, fill them on the device,
// free a random half, defragment with copies on the device, read every survivor back (older
// survivors too: a new allocation or a move over live bytes shows there). Reports through gtest
// assertions.
class scenario_run {
public:
    scenario_run(vk_context& vk, const scenario& sc) : vk_(vk), dev_(vk.device()), sc_(sc), rng_(sc.seed) {}
    scenario_run(const scenario_run&) = delete;
    scenario_run& operator=(const scenario_run&) = delete;
    // Also after an assertion ended run() early: no resource outlives the pool, no block the device.
    ~scenario_run() { release(); }

    void run() {
        choose_memory();
        if (testing::Test::HasFatalFailure()) return;
        strata::device_pool_options options;
        options.block_size = sc_.block_size;
        options.granularity = granularity_;
        options.keep_empty_blocks = sc_.keep_empty_blocks;
        options.nodes_per_block = 2048;
        options.strategy = sc_.strategy;
        strata::device_memory_callbacks callbacks;
        callbacks.allocate = [this](std::uint64_t size, std::uint64_t* memory) {
            auto ai = vk_struct<VkMemoryAllocateInfo>(VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO);
            ai.allocationSize = size;
            ai.memoryTypeIndex = memory_type_;
            VkDeviceMemory m = VK_NULL_HANDLE;
            if (vkAllocateMemory(dev_, &ai, nullptr, &m) != VK_SUCCESS) return false;
            *memory = to_handle(m);
            ++memory_allocations_;
            memory_bytes_ += size;
            return true;
        };
        callbacks.free = [this](std::uint64_t memory, std::uint64_t size) {
            vkFreeMemory(dev_, to_memory(memory), nullptr);
            ++memory_frees_;
            memory_bytes_ -= size;
        };
        pool_ = std::make_unique<device_pool>(std::move(callbacks), options);

        for (std::uint32_t round = 0; round < sc_.rounds; ++round) {
            SCOPED_TRACE("round " + std::to_string(round));
            std::vector<std::size_t> fresh;
            create(round == 0 ? sc_.dedicated : 0, fresh);
            if (testing::Test::HasFatalFailure()) return;
            ASSERT_TRUE(pool_->check());
            if (round == 0) {
                EXPECT_GE(pool_->stats().blocks, 3u) << "the resources should spread over several blocks";
                EXPECT_EQ(pool_->stats().dedicated, sc_.dedicated);
            }
            EXPECT_EQ(check_bindings(resources_, live_, granularity_), "");
            fill(fresh);
            free_half();
            if (testing::Test::HasFatalFailure()) return;
            defragment(round == 0 && sc_.ignore_and_free_in_flight);
            if (testing::Test::HasFatalFailure()) return;
            verify();
            if (testing::Test::HasFatalFailure()) return;
        }

        std::printf("[ vulkan   ] %s: %u rounds, %zu resources (%u buffers, %u optimal images, %u linear "
                    "images), granularity %llu; %u survivors, %llu bytes verified; defragmentation moved "
                    "%llu bytes in %u moves over %u passes (%u ignored, %u freed in flight), %u blocks "
                    "freed, fragmentation %.3f -> %.3f in the last round\n",
                    vk_.properties().deviceName, sc_.rounds, resources_.size(), counts_[0], counts_[1],
                    counts_[2], static_cast<unsigned long long>(granularity_), live_count(),
                    static_cast<unsigned long long>(verified_bytes_),
                    static_cast<unsigned long long>(moved_bytes_), moves_, passes_, ignored_,
                    freed_in_flight_, blocks_freed_, fragmentation_before_, fragmentation_after_);
        release();
        EXPECT_EQ(memory_allocations_, memory_frees_) << "the pool left device memory allocated";
        EXPECT_EQ(memory_bytes_, 0u);
    }

private:
    // Picks what the device supports (R8G8B8A8_UINT images with transfer usage in either tiling)
    // and one memory type for everything the pool holds, device-local where possible. Memory type
    // bits are the same for every buffer of one usage and every image of one tiling and usage, so
    // one probe of each kind tells.
    void choose_memory() {
        VkFormatProperties fp;
        vkGetPhysicalDeviceFormatProperties(vk_.physical(), image_format, &fp);
        constexpr VkFormatFeatureFlags transfer =
            VK_FORMAT_FEATURE_TRANSFER_SRC_BIT | VK_FORMAT_FEATURE_TRANSFER_DST_BIT;
        optimal_ = sc_.image_percent != 0 && (fp.optimalTilingFeatures & transfer) == transfer &&
                   vkGetPhysicalDeviceImageFormatProperties(vk_.physical(), image_format, VK_IMAGE_TYPE_2D,
                                                            VK_IMAGE_TILING_OPTIMAL, image_usage, 0,
                                                            &optimal_limits_) == VK_SUCCESS;
        linear_ = sc_.image_percent != 0 && (fp.linearTilingFeatures & transfer) == transfer &&
                  vkGetPhysicalDeviceImageFormatProperties(vk_.physical(), image_format, VK_IMAGE_TYPE_2D,
                                                           VK_IMAGE_TILING_LINEAR, image_usage, 0,
                                                           &linear_limits_) == VK_SUCCESS;
        const auto probe_bits = [&](resource_type type) {
            resource probe;
            probe.type = type;
            probe.size = 256;
            probe.extent = {16, 16};
            create_resource(dev_, probe);
            const std::uint32_t bits = probe.requirements.memoryTypeBits;
            destroy_resource(dev_, probe);
            return bits;
        };
        std::uint32_t bits = probe_bits(resource_type::buffer);
        if (optimal_) {
            const std::uint32_t b = probe_bits(resource_type::optimal_image);
            optimal_ = (bits & b) != 0;
            if (optimal_) bits &= b;
        }
        if (linear_) {
            const std::uint32_t b = probe_bits(resource_type::linear_image);
            linear_ = (bits & b) != 0;
            if (linear_) bits &= b;
        }
        memory_type_ = find_memory_type(vk_.memory(), bits, 0, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
        ASSERT_NE(memory_type_, ~0u) << "no memory type holds buffers";
        granularity_ = std::max<VkDeviceSize>(vk_.properties().limits.bufferImageGranularity, 1);
    }

    std::uint32_t uniform(std::uint32_t lo, std::uint32_t hi) {
        return std::uniform_int_distribution<std::uint32_t>(lo, hi)(rng_);
    }

    std::uint32_t live_count() const {
        return static_cast<std::uint32_t>(std::count(live_.begin(), live_.end(), true));
    }

    // Creates sc_.resources random buffers and images and `dedicated` buffers big enough for memory
    // of their own, interleaved so that linear and optimal resources meet in the blocks (the
    // granularity rule); their indices go to `fresh`.
    void create(std::uint32_t dedicated, std::vector<std::size_t>& fresh) {
        resources_.reserve(resources_.size() + sc_.resources + dedicated);
        for (std::uint32_t i = 0; i < sc_.resources + dedicated; ++i) {
            resource r;
            r.seed = ++seed_;
            const unsigned roll = uniform(0, 99);
            if (i >= sc_.resources) {
                r.size = 3 * sc_.block_size / 4; // above the default threshold of block_size / 2
            } else if (roll < sc_.image_percent / 2 && optimal_) {
                r.type = resource_type::optimal_image;
                r.extent = {uniform(1, std::min(192u, optimal_limits_.maxExtent.width)),
                            uniform(1, std::min(192u, optimal_limits_.maxExtent.height))};
                const auto full =
                    static_cast<std::uint32_t>(std::bit_width(std::max(r.extent.width, r.extent.height)));
                r.mips = std::min({full, 3u, optimal_limits_.maxMipLevels});
            } else if (roll < sc_.image_percent && linear_) {
                r.type = resource_type::linear_image;
                r.extent = {uniform(1, std::min(160u, linear_limits_.maxExtent.width)),
                            uniform(1, std::min(160u, linear_limits_.maxExtent.height))};
                r.mips = 1;
            } else {
                // Mostly small, some up to 192 KiB: a spread of size classes.
                const std::uint32_t top = 1u << uniform(3, 17);
                r.size = std::max<VkDeviceSize>(8, uniform(8, top + top / 2) & ~3u);
            }
            ++counts_[static_cast<int>(r.type)];
            place(r);
            if (testing::Test::HasFatalFailure()) return;
            fresh.push_back(resources_.size() - 1);
        }
    }

    // Creates resource `r` and binds it at a new pool allocation.
    void place(resource r) {
        create_resource(dev_, r);
        resources_.push_back(r);
        live_.push_back(false);
        resource& x = resources_.back();
        ASSERT_NE((x.requirements.memoryTypeBits >> memory_type_) & 1u, 0u)
            << type_name(x.type) << " cannot live in memory type " << memory_type_;
        x.allocation = pool_->allocate(x.requirements.size, x.requirements.alignment, x.kind());
        ASSERT_TRUE(x.allocation) << "allocate(" << x.requirements.size << ", " << x.requirements.alignment
                                  << ") failed: " << strata::to_string(pool_->last_error());
        live_.back() = true;
        by_allocation_[x.allocation] = resources_.size() - 1;
        const strata::device_allocation_info* info = pool_->info(x.allocation);
        ASSERT_NE(info, nullptr);
        EXPECT_GE(info->size, x.requirements.size);
        EXPECT_EQ(info->offset % x.requirements.alignment, 0u);
        EXPECT_EQ(info->kind, x.kind());
        x.dedicated = info->dedicated;
        bind_resource(dev_, x, info->memory, info->offset);
    }

    // Fills the resources `fresh` names on the device: buffers with their words, each image mip
    // level with its texel.
    void fill(const std::vector<std::size_t>& fresh) {
        vk_.run([&](VkCommandBuffer cb) {
            std::vector<VkImageMemoryBarrier> to_dst;
            for (std::size_t i : fresh)
                if (resources_[i].is_image())
                    to_dst.push_back(layout_barrier(resources_[i], VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL));
            transfer_barrier(cb, to_dst);
            for (std::size_t i : fresh) {
                const resource& r = resources_[i];
                if (!r.is_image()) {
                    vkCmdFillBuffer(cb, r.buffer, 0, VK_WHOLE_SIZE, fill_word(r.seed));
                    continue;
                }
                for (std::uint32_t m = 0; m < r.mips; ++m) {
                    const std::array<std::uint8_t, 4> t = texel(r.seed, m);
                    VkClearColorValue color{};
                    for (int c = 0; c < 4; ++c)
                        color.uint32[c] = t[c];
                    const VkImageSubresourceRange range{VK_IMAGE_ASPECT_COLOR_BIT, m, 1, 0, 1};
                    vkCmdClearColorImage(cb, r.image, r.layout, &color, 1, &range);
                }
            }
            transfer_barrier(cb, {}); // the markers overwrite words of the fills
            for (std::size_t i : fresh) {
                const resource& r = resources_[i];
                if (r.is_image()) continue;
                vkCmdFillBuffer(cb, r.buffer, 0, 4, head_word(r.seed));
                vkCmdFillBuffer(cb, r.buffer, r.size - 4, 4, tail_word(r.seed));
            }
        });
    }

    // Frees a random half of the live resources that share blocks: the resource goes first, then
    // its allocation.
    void free_half() {
        std::vector<std::size_t> order;
        for (std::size_t i = 0; i < resources_.size(); ++i)
            if (live_[i] && !resources_[i].dedicated) order.push_back(i);
        std::shuffle(order.begin(), order.end(), rng_);
        for (std::size_t k = 0; k < order.size() / 2; ++k) {
            resource& r = resources_[order[k]];
            destroy_resource(dev_, r);
            live_[order[k]] = false;
            ASSERT_TRUE(pool_->deallocate(r.allocation));
        }
        ASSERT_TRUE(pool_->check());
    }

    // Defragments: each pass's moves get a new resource bound at the destination and a copy on the
    // device from the old one, which is destroyed before end_pass() frees its range. With
    // `interfere`, the first pass ignores every fourth move and frees an allocation whose move is
    // in flight, as an application may.
    void defragment(bool interfere) {
        const strata::device_pool_stats before = pool_->stats();
        ASSERT_TRUE(pool_->begin_defragmentation(sc_.defrag));
        std::uint32_t passes = 0;
        for (;;) {
            const std::span<defrag_move> moves = pool_->begin_pass();
            if (moves.empty()) break;
            ASSERT_LT(++passes, 1000u) << "defragmentation does not converge";
            ASSERT_TRUE(pool_->check());
            check_moves(moves);
            if (testing::Test::HasFatalFailure()) return;

            if (interfere && passes == 1) {
                for (std::size_t i = 0; i < moves.size(); i += 4) {
                    moves[i].op = defrag_op::ignore;
                    ++ignored_;
                }
                if (moves.size() >= 3) {
                    defrag_move& m = moves[1];
                    const std::size_t i = by_allocation_.at(m.allocation);
                    destroy_resource(dev_, resources_[i]);
                    live_[i] = false;
                    ASSERT_TRUE(pool_->deallocate(m.allocation));
                    EXPECT_EQ(m.op, defrag_op::ignore) << "a freed allocation's move is dropped";
                    ASSERT_TRUE(pool_->check());
                    ++freed_in_flight_;
                }
            }

            // New resources at the destinations, made as the old ones were.
            std::vector<std::pair<std::size_t, resource>> copies; // index, new resource
            for (const defrag_move& m : moves) {
                if (m.op != defrag_op::copy) continue;
                const std::size_t i = by_allocation_.at(m.allocation);
                resource moved = resources_[i];
                moved.buffer = VK_NULL_HANDLE;
                moved.image = VK_NULL_HANDLE;
                create_resource(dev_, moved);
                copies.emplace_back(i, moved);
                resource& x = copies.back().second;
                ASSERT_EQ(x.requirements.size, resources_[i].requirements.size);
                ASSERT_EQ(m.dst_offset % x.requirements.alignment, 0u);
                bind_resource(dev_, x, m.dst_memory, m.dst_offset);
            }
            vk_.run([&](VkCommandBuffer cb) {
                std::vector<VkImageMemoryBarrier> barriers;
                for (auto& [i, moved] : copies) {
                    if (!moved.is_image()) continue;
                    if (resources_[i].layout != VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL)
                        barriers.push_back(
                            layout_barrier(resources_[i], VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL));
                    barriers.push_back(layout_barrier(moved, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL));
                }
                transfer_barrier(cb, barriers);
                for (auto& [i, moved] : copies) {
                    const resource& old = resources_[i];
                    if (!moved.is_image()) {
                        const VkBufferCopy region{0, 0, old.size};
                        vkCmdCopyBuffer(cb, old.buffer, moved.buffer, 1, &region);
                        continue;
                    }
                    std::vector<VkImageCopy> regions(old.mips);
                    for (std::uint32_t mip = 0; mip < old.mips; ++mip) {
                        const VkExtent2D e = old.mip_extent(mip);
                        regions[mip].srcSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, mip, 0, 1};
                        regions[mip].dstSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, mip, 0, 1};
                        regions[mip].extent = {e.width, e.height, 1};
                    }
                    vkCmdCopyImage(cb, old.image, old.layout, moved.image, moved.layout, old.mips,
                                   regions.data());
                }
            });
            for (auto& [i, moved] : copies) {
                destroy_resource(dev_, resources_[i]);
                resources_[i] = moved;
            }
            ASSERT_TRUE(pool_->end_pass());
            ASSERT_TRUE(pool_->check());
            // Every live allocation is where its resource is bound: the moved ones at their
            // destination, the ignored ones and the rest where they were.
            for (std::size_t i = 0; i < resources_.size(); ++i) {
                if (!live_[i]) continue;
                const strata::device_allocation_info* info = pool_->info(resources_[i].allocation);
                ASSERT_NE(info, nullptr);
                ASSERT_EQ(info->memory, resources_[i].memory);
                ASSERT_EQ(info->offset, resources_[i].offset);
            }
        }
        const strata::defrag_stats stats = pool_->end_defragmentation();
        ASSERT_TRUE(pool_->check());
        const strata::device_pool_stats after = pool_->stats();
        EXPECT_EQ(check_bindings(resources_, live_, granularity_), "");
        EXPECT_GT(stats.bytes_moved, 0u);
        EXPECT_GT(stats.allocations_moved, 0u);
        EXPECT_EQ(stats.passes, passes);
        EXPECT_TRUE(stats.blocks_freed > 0 || after.fragmentation() < before.fragmentation())
            << "fragmentation " << before.fragmentation() << " -> " << after.fragmentation();
        EXPECT_LE(after.device_bytes, before.device_bytes);
        EXPECT_EQ(after.device_bytes, memory_bytes_);
        EXPECT_EQ(after.allocations, live_count());
        moved_bytes_ += stats.bytes_moved;
        moves_ += stats.allocations_moved;
        passes_ += stats.passes;
        blocks_freed_ += stats.blocks_freed;
        fragmentation_before_ = before.fragmentation();
        fragmentation_after_ = after.fragmentation();
    }

    // The contract of one pass: a move names a live allocation where it is now, its destination
    // keeps the alignment, the pass stays within its limits, and no two ranges of the pass
    // (sources and destinations) share a byte.
    void check_moves(std::span<const defrag_move> moves) {
        std::vector<std::array<std::uint64_t, 3>> ranges; // memory, begin, end
        std::uint64_t bytes = 0;
        for (const defrag_move& m : moves) {
            const auto it = by_allocation_.find(m.allocation);
            ASSERT_NE(it, by_allocation_.end()) << "a move names an allocation the test does not hold";
            ASSERT_TRUE(live_[it->second]);
            const resource& r = resources_[it->second];
            EXPECT_FALSE(r.dedicated) << "a dedicated allocation was moved";
            EXPECT_EQ(m.op, defrag_op::copy);
            EXPECT_EQ(m.src_memory, r.memory);
            EXPECT_EQ(m.src_offset, r.offset);
            EXPECT_GE(m.size, r.requirements.size);
            EXPECT_EQ(m.dst_offset % r.requirements.alignment, 0u);
            ranges.push_back({m.src_memory, m.src_offset, m.src_offset + m.size});
            ranges.push_back({m.dst_memory, m.dst_offset, m.dst_offset + m.size});
            bytes += m.size;
        }
        if (sc_.defrag.max_bytes_per_pass != 0) {
            EXPECT_LE(bytes, sc_.defrag.max_bytes_per_pass);
        }
        if (sc_.defrag.max_moves_per_pass != 0) {
            EXPECT_LE(moves.size(), sc_.defrag.max_moves_per_pass);
        }
        std::sort(ranges.begin(), ranges.end());
        for (std::size_t i = 1; i < ranges.size(); ++i) {
            if (ranges[i][0] == ranges[i - 1][0]) {
                ASSERT_LE(ranges[i - 1][2], ranges[i][1]) << "two ranges of one pass overlap";
            }
        }
    }

    // Reads every live resource back through one host-visible buffer and compares every byte.
    void verify() {
        VkDeviceSize total = 0;
        std::vector<VkDeviceSize> at(resources_.size(), 0);
        for (std::size_t i = 0; i < resources_.size(); ++i) {
            if (!live_[i]) continue;
            at[i] = total;
            total += resources_[i].readback_bytes(); // multiples of 4: every offset is texel-aligned
        }
        resource staging;
        staging.size = std::max<VkDeviceSize>(total, 4);
        create_resource(dev_, staging);
        const std::uint32_t host_type = find_memory_type(
            vk_.memory(), staging.requirements.memoryTypeBits, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT,
            VK_MEMORY_PROPERTY_HOST_CACHED_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
        VkDeviceMemory memory = VK_NULL_HANDLE;
        struct staging_owner {
            VkDevice dev;
            resource& buffer;
            VkDeviceMemory& memory;
            ~staging_owner() {
                destroy_resource(dev, buffer);
                if (memory != VK_NULL_HANDLE) vkFreeMemory(dev, memory, nullptr);
            }
        } owner{dev_, staging, memory};
        ASSERT_NE(host_type, ~0u) << "no host-visible memory type for the readback";
        auto ai = vk_struct<VkMemoryAllocateInfo>(VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO);
        ai.allocationSize = staging.requirements.size;
        ai.memoryTypeIndex = host_type;
        vk_check(vkAllocateMemory(dev_, &ai, nullptr, &memory), "vkAllocateMemory (staging)");
        bind_resource(dev_, staging, to_handle(memory), 0);

        vk_.run([&](VkCommandBuffer cb) {
            std::vector<VkImageMemoryBarrier> barriers;
            for (std::size_t i = 0; i < resources_.size(); ++i)
                if (live_[i] && resources_[i].is_image() &&
                    resources_[i].layout != VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL)
                    barriers.push_back(layout_barrier(resources_[i], VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL));
            transfer_barrier(cb, barriers);
            for (std::size_t i = 0; i < resources_.size(); ++i) {
                if (!live_[i]) continue;
                const resource& r = resources_[i];
                if (!r.is_image()) {
                    const VkBufferCopy region{0, at[i], r.size};
                    vkCmdCopyBuffer(cb, r.buffer, staging.buffer, 1, &region);
                    continue;
                }
                std::vector<VkBufferImageCopy> regions(r.mips);
                VkDeviceSize offset = at[i];
                for (std::uint32_t mip = 0; mip < r.mips; ++mip) {
                    const VkExtent2D e = r.mip_extent(mip);
                    regions[mip].bufferOffset = offset;
                    regions[mip].imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, mip, 0, 1};
                    regions[mip].imageExtent = {e.width, e.height, 1};
                    offset += VkDeviceSize{e.width} * e.height * texel_bytes;
                }
                vkCmdCopyImageToBuffer(cb, r.image, r.layout, staging.buffer, r.mips, regions.data());
            }
            auto to_host = vk_struct<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
            to_host.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
            to_host.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
            vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1,
                                 &to_host, 0, nullptr, 0, nullptr);
        });
        void* mapped = nullptr;
        vk_check(vkMapMemory(dev_, memory, 0, VK_WHOLE_SIZE, 0, &mapped), "vkMapMemory");
        if ((vk_.memory().memoryTypes[host_type].propertyFlags & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT) == 0) {
            auto range = vk_struct<VkMappedMemoryRange>(VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE);
            range.memory = memory;
            range.size = VK_WHOLE_SIZE;
            vk_check(vkInvalidateMappedMemoryRanges(dev_, 1, &range), "vkInvalidateMappedMemoryRanges");
        }
        const auto* bytes = static_cast<const std::uint8_t*>(mapped);
        std::uint32_t bad = 0;
        std::uint64_t checked = 0;
        for (std::size_t i = 0; i < resources_.size() && bad < 8; ++i) {
            if (!live_[i]) continue;
            const resource& r = resources_[i];
            bad += compare(i, r, bytes + at[i]) ? 0 : 1;
            checked += r.readback_bytes();
        }
        vkUnmapMemory(dev_, memory);
        EXPECT_EQ(bad, 0u);
        if (bad == 0) {
            EXPECT_EQ(checked, total);
        }
        verified_bytes_ += checked;
    }

    // Returns: whether the bytes read back from resource `i` at `p` are what it was filled with.
    static bool compare(std::size_t i, const resource& r, const std::uint8_t* p) {
        if (!r.is_image()) {
            for (VkDeviceSize w = 0; w < r.size / 4; ++w) {
                std::uint32_t got;
                std::memcpy(&got, p + w * 4, 4);
                if (got != expected_word(r, w)) {
                    ADD_FAILURE() << "buffer " << i << " (" << r.size << " bytes at offset " << r.offset
                                  << ") word " << w << ": got " << got << ", expected "
                                  << expected_word(r, w);
                    return false;
                }
            }
            return true;
        }
        for (std::uint32_t mip = 0; mip < r.mips; ++mip) {
            const std::array<std::uint8_t, 4> t = texel(r.seed, mip);
            const VkExtent2D e = r.mip_extent(mip);
            const VkDeviceSize texels = VkDeviceSize{e.width} * e.height;
            for (VkDeviceSize k = 0; k < texels; ++k) {
                if (std::memcmp(p + k * texel_bytes, t.data(), texel_bytes) != 0) {
                    ADD_FAILURE() << type_name(r.type) << " " << i << " (" << r.extent.width << "x"
                                  << r.extent.height << ", " << r.mips << " mips, at offset " << r.offset
                                  << ") mip " << mip << " texel " << k << " differs";
                    return false;
                }
            }
            p += texels * texel_bytes;
        }
        return true;
    }

    // Destroys every resource and hands its allocation back, then frees the pool (and so its
    // blocks): resources never outlive the memory they are bound to.
    void release() {
        if (pool_ == nullptr) return;
        (void)vkDeviceWaitIdle(dev_);
        for (std::size_t i = 0; i < resources_.size(); ++i) {
            destroy_resource(dev_, resources_[i]);
            if (live_[i]) (void)pool_->deallocate(resources_[i].allocation);
            live_[i] = false;
        }
        if (pool_->defragmenting()) (void)pool_->end_defragmentation();
        pool_.reset();
    }

    vk_context& vk_;
    VkDevice dev_;
    const scenario& sc_;
    std::mt19937 rng_;
    bool optimal_ = false;
    bool linear_ = false;
    VkImageFormatProperties optimal_limits_{};
    VkImageFormatProperties linear_limits_{};
    std::uint32_t memory_type_ = ~0u;
    VkDeviceSize granularity_ = 1;
    // Device memory the pool holds through its callbacks.
    std::uint32_t memory_allocations_ = 0;
    std::uint32_t memory_frees_ = 0;
    std::uint64_t memory_bytes_ = 0;
    std::unique_ptr<device_pool> pool_;
    std::vector<resource> resources_; // every resource made, by index; live_ says which still are
    std::vector<bool> live_;
    std::unordered_map<device_allocation, std::size_t> by_allocation_;
    std::uint32_t seed_ = 0;
    // For the summary line.
    std::uint32_t counts_[3] = {};
    std::uint64_t verified_bytes_ = 0;
    std::uint64_t moved_bytes_ = 0;
    std::uint32_t moves_ = 0;
    std::uint32_t passes_ = 0;
    std::uint32_t ignored_ = 0;
    std::uint32_t freed_in_flight_ = 0;
    std::uint32_t blocks_freed_ = 0;
    double fragmentation_before_ = 0;
    double fragmentation_after_ = 0;
};

// Creates the context (or skips / fails when there is none), runs `body`, tears the device down and
// checks that the validation layer said nothing.
template <class Body>
void with_vulkan(Body&& body) {
    vk_messages log;
    {
        std::string why;
        const std::unique_ptr<vk_context> vk = vk_context::create(log, why);
        if (!vk) {
            if (vulkan_required()) FAIL() << "STRATA_REQUIRE_VULKAN=1 but no Vulkan device: " << why;
            GTEST_SKIP() << "no Vulkan device: " << why;
        }
        std::printf("[ vulkan   ] device: %s; validation layer %s, synchronization validation %s\n",
                    vk->description().c_str(), vk->validation() ? "on" : "not installed",
                    vk->sync_validation() ? "on" : "off");
        body(*vk);
    }
    const std::lock_guard lock(log.mutex);
    std::printf("[ vulkan   ] validation messages (warning or error): %zu\n", log.text.size());
    constexpr std::size_t shown = 20; // the first ones tell; a broken barrier repeats per resource
    for (std::size_t i = 0; i < log.text.size() && i < shown; ++i)
        ADD_FAILURE() << "Vulkan " << log.text[i];
    if (log.text.size() > shown) ADD_FAILURE() << log.text.size() - shown << " more Vulkan messages";
}

TEST(DeviceVulkan, DefragmentsBuffersAndImagesOnTheDeviceKeepingEveryByte) {
    with_vulkan([](vk_context& vk) {
        scenario sc;
        sc.rounds = 3;
        sc.defrag.max_bytes_per_pass = std::uint64_t{1} << 20;
        sc.ignore_and_free_in_flight = true;
        sc.seed = 20261128;
        scenario_run(vk, sc).run();
    });
}

TEST(DeviceVulkan, DefragmentsBuffersWithAMoveLimitAndTheMinMemoryStrategy) {
    with_vulkan([](vk_context& vk) {
        scenario sc;
        sc.rounds = 2;
        sc.resources = 256;
        sc.image_percent = 0;
        sc.dedicated = 1;
        sc.strategy = strata::allocation_strategy::min_memory;
        sc.keep_empty_blocks = 0;
        sc.defrag.max_moves_per_pass = 16;
        sc.block_size = std::uint64_t{1} << 20;
        sc.seed = 7;
        scenario_run(vk, sc).run();
    });
}

#endif // STRATA_HAVE_VULKAN

} // namespace

#if STRATA_HAVE_VULKAN && STRATA_VULKAN_TEST_ASAN
// LeakSanitizer reads these suppressions at exit, whether the binary runs under ctest or alone:
// allocations made by the Khronos validation layer (see pin_loaded_libraries()).
extern "C" const char* __lsan_default_suppressions() { return "leak:libVkLayer_khronos_validation.so\n"; }
#endif
